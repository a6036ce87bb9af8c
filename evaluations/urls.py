from django.urls import path

from . import views

app_name = "evaluations"

urlpatterns = [
    path("", views.home, name="home"),
    path("evaluations", views.evaluation_list, name="evaluation_list"),
    path("evaluations/<str:public_id>", views.evaluation_detail, name="evaluation_detail"),
]
