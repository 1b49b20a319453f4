"""The workshop stick: every wheel each environment needs, MNIST, a manifest and a README, so that
a room of laptops installs with no network (``python instructor.pyz stick make E:\\``, then on each
laptop ``python E:\\install.py STACK``). Standard library (pip and, where installed, tqdm)."""
