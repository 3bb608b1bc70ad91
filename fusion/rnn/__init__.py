"""The LSTM / RNN fusions: loop, unrolled and bidirectional LSTMs, and RNN composites."""
