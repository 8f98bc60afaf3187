"""python -m transformer.atlas: the command line of transformer/train/atlas.py."""
from .train.atlas import main

if __name__ == "__main__":
    main()
