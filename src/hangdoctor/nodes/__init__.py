"""A job that spans several nodes: each node's `hangdoctor run` finds the others, captures with
them at a hang, and diagnoses the whole job from everyone's evidence."""
