from benchmarks.run import main

raise SystemExit(main())
