import sys

from om.cli import main

sys.exit(main())
