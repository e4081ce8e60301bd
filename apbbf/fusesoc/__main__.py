"""``python -m apbbf.fusesoc``: see :func:`apbbf.fusesoc.main`."""

import sys

from . import main

sys.exit(main())
