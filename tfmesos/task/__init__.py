"""The task side: what runs inside a task, next to the user's training script.

``report`` is ``tfmesos.report(step=..., loss=...)``, imported by training scripts, so it imports
nothing of tfmesos but the standard library; ``tfserver`` is the built-in TensorFlow server
(``python -m tfmesos.task.tfserver``) for roles without a command of their own.
"""
