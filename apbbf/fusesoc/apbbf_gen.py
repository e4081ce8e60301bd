"""The apbbf FuseSoC generator (``apbbf.core``): FuseSoC runs ``python3 apbbf_gen.py INPUT.yml`` in the
generator's output directory; the work is :func:`apbbf.fusesoc.main`."""

import sys

try:
    from apbbf.fusesoc import main
except ImportError as error:
    sys.exit(f"apbbf generator: the apbbf package is not importable from {sys.executable} ({error}): "
             "pip install apbbf into the environment whose python3 is first on PATH")

sys.exit(main())
