"""`python -m zoo.compare`."""
from ..console.exit import exit_without_collecting
from .cli import main

exit_without_collecting(main())
