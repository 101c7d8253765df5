"""Optimizer checks over optim_db: steps, LR schedules and differentiable steps, eager."""
