"""python -m transformer.data: the command line of transformer/train/data.py."""
from .train.data import main

if __name__ == "__main__":
    main()
