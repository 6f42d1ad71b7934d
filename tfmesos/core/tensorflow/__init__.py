"""What is TensorFlow's: its profile of the job's rules, its ClusterSpec, what its tasks print."""
