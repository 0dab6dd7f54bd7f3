"""`python -m zoo.select`."""
from ..console.exit import exit_without_collecting
from .cli import main

exit_without_collecting(main())
