from snapshotter.cli.launcher import main

main()
