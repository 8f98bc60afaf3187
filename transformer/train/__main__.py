"""python -m transformer.train: the command line of transformer/train/train.py."""
from .train import main

if __name__ == "__main__":
    main()
