"""The unit tier: see conftest.py."""
