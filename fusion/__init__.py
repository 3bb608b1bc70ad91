"""tacopt.fusion: read and write .tflite models, the graph IR, fusion passes, LiteRT checks."""
