"""tacopt.cost_models: the CostModel protocol and the tac, roofline and learned models."""
