"""The ladder and the final: the field they play, their snapshots, the kept ratings and the gradebook."""
