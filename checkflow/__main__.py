"""``python -m checkflow``: the command line (see ``checkflow.cli``)."""

import sys

from checkflow.cli import main

sys.exit(main())
