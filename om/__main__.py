"""`python -m om`: the same entry point as the `om` command (om.cli owns exit codes)."""

import sys

from om.cli import main

sys.exit(main())
