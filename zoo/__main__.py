"""`python -m zoo` is `python -m zoo.compare`."""
import sys

from .compare import main

sys.exit(main())
