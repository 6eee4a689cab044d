"""``python -m tutor.cli``: the ``tutor`` command, for a checkout without the console script."""

import sys

from tutor.cli import main

sys.exit(main())
