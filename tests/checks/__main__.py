"""python3 -m checks MODULE FUNCTION ARGS...: runs checks.MODULE.FUNCTION(*ARGS)."""
import importlib
import sys


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: python3 -m checks MODULE FUNCTION ARGS...")
    module = importlib.import_module(f"checks.{argv[1]}")
    check = getattr(module, argv[2], None)
    if check is None:
        sys.exit(f"checks.{argv[1]} has no check named {argv[2]!r}")
    check(*argv[3:])


if __name__ == "__main__":
    main(sys.argv)
