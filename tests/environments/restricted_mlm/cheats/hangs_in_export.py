"""A model that never finishes loading (a loop in get_trained_model): the sandboxed export
is stopped at the profile's export timeout."""
import time


def get_trained_model():
    while True:
        time.sleep(1)
