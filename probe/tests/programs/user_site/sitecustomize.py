"""A user's own sitecustomize, which the probe's sitecustomize shadows and must still run."""
import os

os.environ["USER_SITECUSTOMIZE_RAN"] = "1"
