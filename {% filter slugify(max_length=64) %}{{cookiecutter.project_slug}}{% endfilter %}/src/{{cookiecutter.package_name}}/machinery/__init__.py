"""The machinery behind the training example: devices, optimizers, checkpoints and exact
resume, Ctrl+C and the NaN guard, progress and metrics, plots, the command line.

The learner's files (``model.py``, ``data.py``, ``train.py``) call into these modules; nothing
here needs reading to understand how the model learns. The project's settings
(``project.json``) and the environment checks are the doctor's: ``src/gpu_doctor``.
"""
