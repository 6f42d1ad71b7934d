"""``python -m tfmesos.executor``: the command every TaskInfo's executor runs (a wire contract: kept)."""
import sys

from .executor import main

if __name__ == "__main__":
    sys.exit(main())
