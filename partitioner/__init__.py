"""tacopt.partitioner: targets, annotation, subgraphs, views, pick problems, pickers, plans, CLI."""
