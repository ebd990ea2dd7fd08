from snapshotter.cli import main

main()
