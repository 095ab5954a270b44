from fleetgen.cli import main

main()
