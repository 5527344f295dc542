"""Tests of the broker simulator."""
