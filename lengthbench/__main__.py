"""``python -m lengthbench`` is the ``lengthbench`` command."""

import sys

from lengthbench.benchmark.cli import main

sys.exit(main())
