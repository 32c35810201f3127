"""``python -m checkflow``: the command line (see ``checkflow.cli``).

It must never do more than call ``checkflow.cli.main``.
"""

import sys

from checkflow.cli import main

sys.exit(main())
