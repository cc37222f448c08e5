"""The end-to-end tests' checks: one module per script of tests/e2e, one function per check.
Each function takes the script's arguments as strings and exits non-zero (sys.exit with a
message, or an AssertionError) when what it checks does not hold.
"""
