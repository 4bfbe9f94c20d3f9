"""Who may do what through the API: the same Django model permissions the admin asks for.

Staff status alone opens nothing: a staff user without permissions gets 403 in the admin,
and so here. DRF's DjangoModelPermissions asks for no permission on reads; the admin asks for
`view` (or `change`), so reads here ask for `view` too.
"""

from rest_framework.permissions import DjangoModelPermissions

_VIEW = ["%(app_label)s.view_%(model_name)s"]
_CHANGE = ["%(app_label)s.change_%(model_name)s"]


class ModelPermissions(DjangoModelPermissions):
    """`view` to read, `add` to create, `change` to update, `delete` to delete; superusers pass."""

    perms_map = {**DjangoModelPermissions.perms_map, "GET": _VIEW, "HEAD": _VIEW, "OPTIONS": _VIEW}


class ChangePermission(ModelPermissions):
    """A POST that acts on an existing row (replaying a delivery) needs `change`, not `add`."""

    perms_map = {**ModelPermissions.perms_map, "POST": _CHANGE}
