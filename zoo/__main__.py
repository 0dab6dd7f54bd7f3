"""`python -m zoo` is `python -m zoo.compare`."""
from .console.exit import exit_without_collecting
from .compare.cli import main

exit_without_collecting(main())
