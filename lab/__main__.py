import sys

from lab.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
