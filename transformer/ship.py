"""python -m transformer.ship: the command line of transformer/train/ship.py."""
from .train.ship import main

if __name__ == "__main__":
    main()
