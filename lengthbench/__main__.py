"""``python -m lengthbench`` is the ``lengthbench`` command."""

import sys

from lengthbench.cli import main

sys.exit(main())
