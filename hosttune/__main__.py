"""`python -m hosttune` runs the CLI."""

from hosttune.cli import main

if __name__ == "__main__":
    main()
