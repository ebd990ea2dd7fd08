from snapshotter.launcher import main

main()
