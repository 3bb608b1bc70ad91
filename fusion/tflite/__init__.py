"""The ``.tflite`` format: read it into the IR, write it back, run it under LiteRT."""
