# helper package for sdpa/ok__pkg_folder.py (not checked itself)
