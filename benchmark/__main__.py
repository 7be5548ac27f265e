"""``python -m benchmark`` is the ``lengthbench`` command."""

import sys

from benchmark.cli import main

sys.exit(main())
