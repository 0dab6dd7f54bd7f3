"""`python -m zoo` is `python -m zoo.compare`."""
import sys

from .compare.cli import main

sys.exit(main())
