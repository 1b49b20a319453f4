"""The doctor's own tests (gpu_doctor/ at the top of the repository): a package, so that its
conftest.py is not the template tests' `conftest` module."""
