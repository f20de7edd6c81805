"""``python -m dualsolve``: the ``dualsolve`` command (see :mod:`dualsolve.cli`)."""
import sys

from dualsolve.cli import main

if __name__ == "__main__":
    sys.exit(main())
