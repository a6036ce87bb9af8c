"""The evaluation platform: organizations, image catalog, evaluations, execution and scores."""
