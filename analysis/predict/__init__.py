"""Prediction's math, importing nothing from zoo: the devices' datasheets, the roofline, the calibration and its
fit, the memory of a training step and the training schedule's arithmetic."""
