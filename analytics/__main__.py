"""`python -m analytics CAPTURE_DIR ... --out DIR`: the analytics job (see analytics.job)."""

from analytics.job import console

if __name__ == "__main__":
    console()
