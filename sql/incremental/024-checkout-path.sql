-- repositories.origin held the path of the checkout a repository was last indexed
-- from, not a git remote: it is checkout_path.
alter table codesift.repositories rename column origin to checkout_path;
