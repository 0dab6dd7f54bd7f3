"""Predicted rows of a request on a datasheet device: inference and training, never measured, never printed here
(the commands print them). The math is analysis.predict's."""
