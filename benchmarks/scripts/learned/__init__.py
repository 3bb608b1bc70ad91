"""The learned cost model studied: its accuracy on held-out and unseen models, learning and
adapting on a device, repeatability and drift of the measurements, what LiteRT folds at init."""
