"""``python -m tfmesos.executor``: the command every TaskInfo's executor runs (a wire contract: kept)."""
from .executor import main

if __name__ == "__main__":
    main()
