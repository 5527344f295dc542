"""The controller's state: managers that each own a slice, mutated only by `replay(record)`."""
